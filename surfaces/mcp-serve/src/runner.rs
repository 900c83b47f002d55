//! `run_prompt`: one agent turn in a new or continued session, with approvals
//! denied (nobody can answer them), cancellable, reporting progress.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use talaria_agent::{Agent, AgentOptions, Surface};
use talaria_approval::DenyAll;
use talaria_kernel::Principal;
use talaria_kernel::{AgentEvent, CancellationToken, EventSink, Exit};
use talaria_profile::config::ApprovalMode;
use talaria_profile::{Overrides, ProfileHome, Settings, SettingsError};
use talaria_store::SessionDb;
use tokio::sync::{mpsc, oneshot};

use crate::tools::{Arguments, BadArguments, MAX_PROMPT_BYTES};

/// Why a run gave no answer. Each message is meant for the client's user.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The arguments do not fit the schema.
    #[error(transparent)]
    Arguments(#[from] BadArguments),
    /// The working directory is unusable.
    #[error("cwd {path}: {reason}")]
    Cwd {
        /// As given.
        path: String,
        /// Why.
        reason: String,
    },
    /// No model is configured, or the profile's config is broken.
    #[error("{0}")]
    Settings(String),
    /// The session to continue cannot be found or opened.
    #[error("{0}")]
    Session(String),
    /// Another run is using the session.
    #[error(
        "session {0} is busy with another run_prompt; wait for it to finish or start a new session"
    )]
    Busy(String),
    /// The agent could not be assembled.
    #[error("cannot start the agent: {0}")]
    Build(String),
    /// The client cancelled the request.
    #[error(
        "cancelled by the client; session {0} keeps what was done so far (continue it with session_id)"
    )]
    Cancelled(String),
    /// The model or the loop failed.
    #[error("the run failed: {message} (session {session_id})")]
    Failed {
        /// The session that holds what was done.
        session_id: String,
        /// What went wrong, credentials removed.
        message: String,
    },
    /// The worker thread running the agent died.
    #[error("the agent stopped unexpectedly: {0}")]
    Crashed(String),
}

/// A finished run.
#[derive(Debug)]
pub struct RunResult {
    /// The final answer (or the forced summary).
    pub answer: String,
    /// The session holding the conversation.
    pub session_id: String,
    /// Everything else `structuredContent` carries.
    pub structured: Value,
}

/// What the run is doing, for progress notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step(pub String);

/// Runs prompts for one server; shared by all its connections.
#[derive(Debug)]
pub struct Runner {
    home: ProfileHome,
    overrides: Overrides,
    default_cwd: PathBuf,
    /// Sessions with a run in progress: two runs appending to one session
    /// would interleave their turns.
    busy: Mutex<HashSet<String>>,
}

/// Takes a session off the busy list when its run ends, however it ends.
struct BusyGuard<'a> {
    runner: &'a Runner,
    id: String,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut busy) = self.runner.busy.lock() {
            busy.remove(&self.id);
        }
    }
}

/// Forwards the loop's events as progress steps (the sink is synchronous).
struct ProgressSink(mpsc::UnboundedSender<Step>);

impl EventSink for ProgressSink {
    fn emit(&self, event: AgentEvent) {
        let step = match event {
            AgentEvent::ModelRequest { iteration, .. } => format!("model call {iteration}"),
            AgentEvent::ToolStarted { name, .. } => format!("running tool {name}"),
            AgentEvent::Retrying { attempt, .. } => {
                format!("retrying the model (attempt {attempt})")
            }
            AgentEvent::Compressed { .. } => "compressed the conversation".to_owned(),
            _ => return,
        };
        let _ = self.0.send(Step(step));
    }
}

impl Runner {
    pub fn new(home: ProfileHome, overrides: Overrides, default_cwd: PathBuf) -> Self {
        Self {
            home,
            overrides,
            default_cwd,
            busy: Mutex::new(HashSet::new()),
        }
    }

    /// The profile's settings, with approvals denied whatever the config says.
    /// Read per run, so a config edit applies to the next run.
    fn settings(&self) -> Result<Settings, RunError> {
        let (env, config) = talaria_profile::load_profile(&self.home)
            .map_err(|e| RunError::Settings(e.to_string()))?;
        let mut settings =
            Settings::resolve(&self.overrides, &env, config, &self.home).map_err(|e| {
                let hint = if matches!(e, SettingsError::Missing(_)) {
                    " (run `talaria setup` for this profile, or start the server with --provider, --model and --base-url)"
                } else {
                    ""
                };
                RunError::Settings(format!("{e}{hint}"))
            })?;
        settings.yolo = false;
        settings.config.approvals.mode = ApprovalMode::Deny;
        Ok(settings)
    }

    fn cwd(&self, given: Option<String>) -> Result<PathBuf, RunError> {
        let Some(given) = given else {
            return Ok(self.default_cwd.clone());
        };
        let bad = |reason: &str| RunError::Cwd {
            path: given.clone(),
            reason: reason.to_owned(),
        };
        let path = Path::new(&given);
        if !path.is_absolute() {
            return Err(bad("must be an absolute path"));
        }
        let path = path
            .canonicalize()
            .map_err(|e| bad(&format!("cannot be used ({e})")))?;
        if !path.is_dir() {
            return Err(bad("is not a directory"));
        }
        Ok(path)
    }

    /// The full id of the session `prefix` names, among `principal`'s.
    fn resolve(&self, prefix: &str, principal: &Principal) -> Result<String, RunError> {
        let db = SessionDb::shared(self.home.session_db())
            .map_err(|e| RunError::Session(format!("cannot continue a session: {e}")))?;
        db.resolve_id(prefix, principal)
            .map_err(|e| RunError::Session(format!("cannot continue: {e}")))
    }

    fn claim(&self, id: &str) -> Result<BusyGuard<'_>, RunError> {
        let mut busy = self
            .busy
            .lock()
            .map_err(|_| RunError::Crashed("the busy-session list was poisoned".into()))?;
        if !busy.insert(id.to_owned()) {
            return Err(RunError::Busy(id.to_owned()));
        }
        Ok(BusyGuard {
            runner: self,
            id: id.to_owned(),
        })
    }

    /// Runs `run_prompt`'s arguments to an answer. `progress` receives the
    /// steps; `cancel` stops the turn (the session keeps what was done).
    pub async fn run(
        &self,
        args: &Arguments<'_>,
        cancel: CancellationToken,
        progress: mpsc::UnboundedSender<Step>,
        principal: Principal,
    ) -> Result<RunResult, RunError> {
        let prompt = args.required_string("prompt")?;
        if prompt.len() > MAX_PROMPT_BYTES {
            return Err(BadArguments(format!(
                "run_prompt: 'prompt' is {} bytes; the limit is {MAX_PROMPT_BYTES}",
                prompt.len()
            ))
            .into());
        }
        let cwd = self.cwd(args.string("cwd")?)?;
        let settings = self.settings()?;
        let resume = args
            .string("session_id")?
            .map(|prefix| self.resolve(&prefix, &principal))
            .transpose()?;
        let _guard = resume.as_deref().map(|id| self.claim(id)).transpose()?;

        // The agent runs on a thread of its own with its own runtime: building
        // it does blocking work (plugins, SQLite) that must not stall the
        // server's connections, and its futures need not be `Send`.
        let options = AgentOptions {
            surface: Surface::McpServer,
            cwd,
            approver: Arc::new(DenyAll),
            resume,
            editor: None,
            messenger: None,
            clarifier: None,
            browsers: None,
            chat_user: None,
            principal,
        };
        let (done, result) = oneshot::channel();
        let home = self.home.clone();
        let thread = std::thread::Builder::new()
            .name("mcp-run".into())
            .spawn(move || {
                let outcome = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| RunError::Crashed(format!("cannot start a runtime: {e}")))
                    .and_then(|runtime| {
                        runtime
                            .block_on(run_agent(settings, home, options, prompt, cancel, progress))
                    });
                let _ = done.send(outcome);
            });
        if let Err(error) = thread {
            return Err(RunError::Crashed(format!("cannot start a thread: {error}")));
        }
        result
            .await
            .map_err(|_| RunError::Crashed("the run's thread ended without an answer".into()))?
    }
}

async fn run_agent(
    settings: Settings,
    home: ProfileHome,
    options: AgentOptions,
    prompt: String,
    cancel: CancellationToken,
    progress: mpsc::UnboundedSender<Step>,
) -> Result<RunResult, RunError> {
    let mut agent = Agent::build(&settings, &home, options)
        .await
        .map_err(|e| RunError::Build(redact(&e.to_string())))?;
    // Notices go to the log (stderr), never to the protocol stream, and into
    // the result, where an HTTP client (which never sees stderr) reads them.
    let notices: Vec<String> = agent.notices().iter().map(|n| redact(n)).collect();
    for notice in &notices {
        eprintln!("talaria mcp serve: note: {notice}");
    }
    let outcome = agent.run(&prompt, &ProgressSink(progress), &cancel).await;
    agent.end_session().await;
    let session_id = agent.conversation().session_id.clone();
    let state = agent.state();
    let usage = json!({
        "model_calls": state.iterations,
        "input_tokens": state.usage.input_tokens,
        "output_tokens": state.usage.output_tokens,
        "cache_read_tokens": state.usage.cache_read_tokens,
        "cache_write_tokens": state.usage.cache_write_tokens,
        "cost_usd": state.cost_usd,
    });
    let (answer, status) = match outcome {
        Ok(Exit::Final(text)) => (text, "answered"),
        Ok(Exit::BudgetExhausted { summary, .. }) => (summary, "budget_exhausted"),
        Ok(Exit::Interrupted) => return Err(RunError::Cancelled(session_id)),
        Err(error) => {
            return Err(RunError::Failed {
                session_id,
                message: redact(&error.to_string()),
            });
        }
    };
    let answer = answer.trim_end().to_owned();
    let mut structured = json!({
        "answer": answer,
        "session_id": session_id,
        "status": status,
        "usage": usage,
    });
    if !notices.is_empty() {
        structured["notices"] = json!(notices);
    }
    Ok(RunResult {
        structured,
        answer,
        session_id,
    })
}

/// `text` with credentials replaced (errors may quote a request or a key).
fn redact(text: &str) -> String {
    talaria_redact::redact(text).into_owned()
}
